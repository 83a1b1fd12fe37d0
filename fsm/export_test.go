package fsm

// allowedWithoutApply is judgeWithoutApply's verdict alone.
func allowedWithoutApply(s *state, c *Command) bool { return judgeWithoutApply(s, c).allowed }
