package gcs

import (
	"fmt"
	"strings"

	"cloud.google.com/go/storage"

	"github.com/siltsync/silt/backend"
)

// Config configures a GCS backend.
type Config struct {
	// Bucket is the bucket name, without "gs://".
	Bucket string
	// Prefix is prepended to every key, so several trees can share a
	// bucket. A trailing slash is added when missing.
	Prefix string
	// Client is used when non-nil, which lets tests point the backend at
	// an emulator; the backend then does not close it. When nil, New
	// creates a client from the default credentials and Close closes it.
	Client *storage.Client
	// NoConditionalDelete makes Delete refuse Cond{IfMatch} with
	// backend.ErrNotSupported and Capabilities report it. Real GCS needs
	// it false; set it for an emulator that ignores ifGenerationMatch on
	// DELETE (fake-gcs-server v1.56.1), where a "conditional" delete would
	// silently delete whatever is there.
	NoConditionalDelete bool
	// CredentialsFile is a Google credentials JSON file (a service
	// account key, an authorized user, an external account) to use
	// instead of the application default credentials. Empty takes
	// GOOGLE_APPLICATION_CREDENTIALS, as the SDK does, then the
	// application default. A file that is missing, unreadable or not a
	// credentials file fails New with a [CredentialsFileError].
	CredentialsFile string

	credentialsFrom string // where CredentialsFile came from, for messages
}

// normPrefix validates p and returns it with a trailing slash, or "".
func normPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	if err := backend.ValidateKey(p); err != nil {
		return "", fmt.Errorf("gcs: prefix: %w", err)
	}
	return p + "/", nil
}
