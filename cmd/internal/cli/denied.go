package cli

// stopOnRefusal ends tenure with ExitNoPerm (see supervisor.denied) when
// err, what the elector's or the group's Run returned, says that the
// coordinator refused the credentials or the permission (see refused):
// the library returns such a refusal instead of retrying it, having ended
// the term, and so stopped the command, first. It returns err.
func (s *supervisor) stopOnRefusal(err error) error {
	if err != nil && causeCode(err) == ExitNoPerm {
		s.denied(err)
	}
	return err
}
