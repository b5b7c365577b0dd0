package s3

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/siltsync/silt/backend"
)

// Describe implements backend.Describer. The credential source is the
// one the AWS SDK's chain picks for this Config, worked out from the
// Config and the environment in the SDK's order (static, explicit
// profile, environment keys, web identity, AWS_PROFILE, default
// profile); it sends no request and never reads a secret.
func (b *Backend) Describe() backend.Description {
	endpoint := b.cfg.Endpoint
	if endpoint == "" {
		endpoint = fmt.Sprintf("https://s3.%s.amazonaws.com (AWS)", b.region)
	}
	return backend.Description{
		Scheme: Scheme, Bucket: b.cfg.Bucket, Prefix: b.cfg.Prefix,
		Endpoint: endpoint, Region: b.region, Credentials: credentialSource(b.cfg),
	}
}

func credentialSource(c Config) string {
	switch {
	case c.AccessKeyID != "" && c.fromURL:
		return "static from URL"
	case c.AccessKeyID != "":
		return "static from Config"
	case c.AWSConfig != nil:
		return "the caller's aws.Config"
	case c.Profile != "":
		return fmt.Sprintf("shared profile %s (%s)", c.Profile, sharedFiles())
	case os.Getenv("AWS_ACCESS_KEY_ID") != "" && os.Getenv("AWS_SECRET_ACCESS_KEY") != "":
		return "env (AWS_ACCESS_KEY_ID)"
	case os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE") != "":
		return "web identity (AWS_WEB_IDENTITY_TOKEN_FILE " + os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE") + ")"
	case os.Getenv("AWS_PROFILE") != "":
		return fmt.Sprintf("shared profile %s from AWS_PROFILE (%s)", os.Getenv("AWS_PROFILE"), sharedFiles())
	}
	return fmt.Sprintf("default chain: shared profile default (%s), else SSO, container or instance role", sharedFiles())
}

// sharedFiles names the shared credentials and config files the SDK
// reads, with the home directory shortened to ~.
func sharedFiles() string {
	home, _ := os.UserHomeDir()
	file := func(env, name string) string {
		p := os.Getenv(env)
		if p == "" {
			p = filepath.Join(home, ".aws", name)
		}
		if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
			p = "~" + p[len(home):]
		}
		return p
	}
	return file("AWS_SHARED_CREDENTIALS_FILE", "credentials") + ", " + file("AWS_CONFIG_FILE", "config")
}
