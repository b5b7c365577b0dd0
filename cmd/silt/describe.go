package main

import "github.com/siltsync/silt/backend"

// storeInfo is what `silt status -v` says about the store: where requests
// go and where their credentials come from, never the credentials.
type storeInfo struct {
	URL       string `json:"url"` // any secret removed
	Namespace string `json:"namespace"`
	backend.Description
}

// describeStore describes bd's store through backend.Describe, so the
// command never looks inside an SDK.
func describeStore(bd *bound) *storeInfo {
	si := &storeInfo{URL: redactURL(bd.cfg.URL), Namespace: bd.cfg.Namespace}
	switch d, ok := backend.Describe(bd.b); {
	case bd.b == nil:
		si.Credentials = "those of the silt serve that owns this cache"
	case ok:
		si.Description = d
	default:
		si.Credentials = "not described by this store"
	}
	return si
}

func (si *storeInfo) print(c *cli) {
	or := func(s, none string) string {
		if s == "" {
			return none
		}
		return s
	}
	c.printf("store: %s bucket %s, prefix %s\n", or(si.Scheme, "?"), or(si.Bucket, "?"), or(si.Prefix, "(none)"))
	c.printf("  endpoint:    %s\n", or(si.Endpoint, "(none: local)"))
	c.printf("  region:      %s\n", or(si.Region, "(not applicable)"))
	c.printf("  credentials: %s\n", or(si.Credentials, "(unknown)"))
	c.printf("  namespace:   %s\n", or(si.Namespace, "(none)"))
}
