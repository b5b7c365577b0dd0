package fs

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/siltsync/silt/backend"
)

func init() {
	backend.Register(Scheme, openURL)
}

// openURL opens "file:///abs/dir", "file://localhost/abs/dir" or
// "file://./rel/dir". The whole path is the bucket directory, so unlike
// other schemes the URL carries no key prefix.
func openURL(_ context.Context, u *url.URL) (backend.Driver, error) {
	if err := backend.CheckParams(u, "create"); err != nil {
		return nil, err
	}
	create := true
	if s := u.Query().Get("create"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("backend: file URL: create=%q is not true or false", s)
		}
		create = v
	}
	dir, err := dirOf(u)
	if err != nil {
		return nil, err
	}
	return open(dir, create)
}

func dirOf(u *url.URL) (string, error) {
	if u.Opaque != "" {
		return "", fmt.Errorf("backend: file URL %q: write file:///absolute/dir or file://./relative/dir", u.Redacted())
	}
	var dir string
	switch u.Host {
	case "", "localhost":
		dir = u.Path
	case ".":
		dir = "." + u.Path // "file://./rel" parses as host "." and path "/rel"
	default:
		return "", fmt.Errorf("backend: file URL %q: host %q is not local (want file:///dir or file://localhost/dir)", u.Redacted(), u.Host)
	}
	if dir == "" {
		return "", fmt.Errorf("backend: file URL %q names no directory", u.Redacted())
	}
	return dir, nil
}
