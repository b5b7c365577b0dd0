package index

// MaxTouched is maxTouched, for the tests of what an entry carries.
const MaxTouched = maxTouched
