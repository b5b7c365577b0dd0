package backend

// Description says where a store is and how it authenticates, for a
// person reading `silt status -v`. It never holds a secret: Credentials
// names where the credentials come from, not what they are.
type Description struct {
	// Scheme is the URL scheme of the driver ("s3", "gs", "file", ...).
	Scheme string `json:"scheme"`
	// Bucket is the bucket, container or directory.
	Bucket string `json:"bucket,omitempty"`
	// Prefix is the key prefix every key is stored under, if any.
	Prefix string `json:"prefix,omitempty"`
	// Endpoint is the base URL requests go to, when the store has one.
	Endpoint string `json:"endpoint,omitempty"`
	// Region is the region requests are signed for, when it applies.
	Region string `json:"region,omitempty"`
	// Credentials names the source of the credentials: "env
	// (AWS_ACCESS_KEY_ID)", "shared profile work (~/.aws/credentials)",
	// "GCS credentials file /etc/key.json", "application default",
	// "none" for stores that need none.
	Credentials string `json:"credentials,omitempty"`
}

// Describer is implemented by drivers that can describe themselves. It is
// optional: [Describe] finds it under any wrappers. Describe sends no
// request.
type Describer interface {
	Describe() Description
}

// Describe returns the description of the first layer of b, from the
// outside in, that implements [Describer], with the prefixes of the
// [Prefixed] layers above it joined onto its Prefix. ok is false when no
// layer does.
func Describe(b Backend) (d Description, ok bool) {
	var outer string
	var l Driver = b
	for l != nil {
		if ds, is := l.(Describer); is {
			d = ds.Describe()
			d.Prefix += outer
			return d, true
		}
		if p, is := l.(*prefixed); is {
			outer = p.prefix + outer
		}
		next, is := under(l)
		if !is {
			return Description{}, false
		}
		l = next
	}
	return Description{}, false
}
