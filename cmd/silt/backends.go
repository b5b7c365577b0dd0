package main

// The stores this command ships are backend/stores' list (the one list,
// which silt-conformance links too): importing it registers each URL
// scheme with backend.Open. This file says how the command opens them.
import (
	"context"
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	"net/url"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/seal"
	_ "github.com/siltsync/silt/backend/stores" // file://, mem://, s3://, gs://, blob+...://
	"github.com/siltsync/silt/internal/crypt"
)

// storeFlags declares --timeout, --profile and --gcs-credentials, which
// every command has because every command may open a store.
func storeFlags(fs *flag.FlagSet, c *cli) {
	fs.DurationVar(&c.timeout, "timeout", backend.DefaultTimeout,
		"fail a store request, all its retries counted, once it has made no progress for this long: a store that never answers fails in about this long, a moving transfer is never cut (a URL's ?timeout= wins; see also ?first_byte_timeout=, ?stall_timeout=)")
	fs.StringVar(&c.profile, "profile", "",
		"the AWS shared config profile for s3:// URLs, as aws --profile (default: $AWS_PROFILE; a URL's ?profile= wins)")
	fs.StringVar(&c.passwordFile, "password-file", "",
		"a `FILE` holding the passphrase of an encrypted bucket (default: $SILT_PASSWORD); a plain bucket ignores it")
	fs.StringVar(&c.gcsCredentials, "gcs-credentials", "",
		"a Google credentials JSON file for gs:// URLs (default: $GOOGLE_APPLICATION_CREDENTIALS, then application default; a URL's ?credentials= wins)")
}

// withStoreFlags returns raw with --profile or --gcs-credentials added as
// the URL parameter its scheme knows, unless the URL sets it already. A
// flag the URL's scheme cannot use is a usage error when strict, not
// silently dropped.
func withStoreFlags(ctx context.Context, raw string, strict bool) (string, error) {
	c, _ := ctx.Value(cliKey{}).(*cli)
	if c == nil || (c.profile == "" && c.gcsCredentials == "") {
		return raw, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil // backend.Open reports it
	}
	q := u.Query()
	switch {
	case u.Scheme == "s3" && c.profile != "":
		if !q.Has("profile") {
			q.Set("profile", c.profile)
		}
	case u.Scheme == "gs" && c.gcsCredentials != "":
		if !q.Has("credentials") {
			q.Set("credentials", c.gcsCredentials)
		}
	case !strict:
		return raw, nil
	case c.profile != "":
		return "", usagef("--profile applies to s3:// URLs, not %s", redactURL(raw))
	default:
		return "", usagef("--gcs-credentials applies to gs:// URLs, not %s", redactURL(raw))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

type cliKey struct{}

// withCLI lets openURL, which only has a context, see the command's flags.
func withCLI(ctx context.Context, c *cli) context.Context {
	return context.WithValue(ctx, cliKey{}, c)
}

// openOptions are the backend.Open options the command's flags ask for.
func openOptions(ctx context.Context) []backend.Option {
	c, _ := ctx.Value(cliKey{}).(*cli)
	if c == nil || c.timeout == 0 {
		return nil
	}
	return []backend.Option{backend.WithTimeout(c.timeout)}
}

// passphrase is the passphrase the command was given: --password-file,
// else $SILT_PASSWORD, else nil (no passphrase: a plain bucket).
func passphrase(ctx context.Context) ([]byte, error) {
	c, _ := ctx.Value(cliKey{}).(*cli)
	if c != nil && c.passwordFile != "" {
		p, err := crypt.ReadPassphraseFile(c.passwordFile)
		if err != nil {
			return nil, usagef("--password-file: %v", err)
		}
		return p, nil
	}
	p, _ := crypt.PassphraseFromEnv()
	return p, nil
}

// unlock puts the encrypting layer over b when the command has a
// passphrase and the bucket is encrypted.
func unlock(ctx context.Context, b backend.Backend, url string) (backend.Backend, error) {
	p, err := passphrase(ctx)
	if err != nil || p == nil {
		return b, err
	}
	sb, err := seal.Open(ctx, b, p)
	switch {
	case errors.Is(err, seal.ErrWrongPassphrase):
		return nil, withHint(fmt.Errorf("open %s: %w", redactURL(url), err),
			"check --password-file or $SILT_PASSWORD; silt key list shows the bucket's key files")
	case err != nil:
		return nil, fmt.Errorf("open %s: unlock: %w", redactURL(url), err)
	}
	return sb, nil
}
