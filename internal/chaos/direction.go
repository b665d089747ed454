package chaos

import "github.com/tenure-dev/tenure/internal/tcpproxy"

// Direction is one way through a node's proxy.
type Direction = tcpproxy.Direction

// The two directions through a proxy.
const (
	// Up carries requests: node to coordinator or register.
	Up = tcpproxy.Up
	// Down carries replies.
	Down = tcpproxy.Down
)
