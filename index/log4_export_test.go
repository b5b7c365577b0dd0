package index

// EnableLogDeletion turns on the deletion of old log entries for the
// tests of its rules, and returns the function that turns it off again.
func EnableLogDeletion() func() {
	deleteLogEntries = true
	return func() { deleteLogEntries = false }
}
