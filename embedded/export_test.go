package embedded

// SetClosing sets the flag Close sets first, without closing: the test of
// the stream interceptor opens streams while the member is otherwise
// serving.
func SetClosing(s *Server, closing bool) { s.closing.Store(closing) }
