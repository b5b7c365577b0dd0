package s3

// NewDriver is the bare driver, without backend.Portable, so a test sees
// what the driver alone makes of an answer.
var NewDriver = newDriver
