// Package embedded runs an etcd member inside the tenure process, so that
// tenure needs no separately installed coordinator: one member keeps its data
// in a directory and is ready in well under a second; several processes with
// the same initial cluster form a real multi-member etcd cluster.
//
// Start a member with Start, connect to it through its Endpoints (with
// package etcd's Dial, or any etcd v3 client), and stop it with Close. Close
// ends client connections first, so that open watches cannot delay the
// shutdown, and returns once every goroutine etcd started has ended.
//
// etcd logs through zap; the member's records are forwarded to
// Config.Logger, a log/slog logger, at Config.LogLevel and above (errors by
// default). A nil Logger discards them.
package embedded
