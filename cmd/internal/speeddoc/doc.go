// Command speeddoc writes docs/speed.md from one run of tenure bench, and
// guards against gross speed regressions in CI.
//
//	speeddoc measure -tenure BIN -out docs/speed.json   # every benchmark the page cites, one after the other
//	speeddoc render -in docs/speed.json -out docs/speed.md
//	speeddoc guard -tenure BIN                          # short side-by-side runs against floors
//
// scripts/speed.sh runs measure and render; scripts/speed-guard.sh runs
// guard. measure starts a PostgreSQL server of its own (internal/pgtest);
// each etcd benchmark starts its own etcd member. docs/speed.json keeps
// what each benchmark printed (--json) with the commit, the machine and the
// date; docs/speed.md is rendered from it alone, so that the test of this
// package can render it again and find a figure edited by hand, and can
// find a measurement older than the coordinator code it describes.
package main
