package s3

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/siltsync/silt/backend"
)

// URL query parameters; see the package documentation.
const (
	paramRegion            = "region"
	paramEndpoint          = "endpoint"
	paramUsePathStyle      = "use_path_style"
	paramDisableHTTPS      = "disable_https"
	paramRequestChecksum   = "request_checksum_calculation"
	paramResponseChecksum  = "response_checksum_validation"
	paramConditionalDelete = "conditional_delete"
	paramMultipart         = "multipart_threshold"
	paramPartSize          = "part_size"
	paramProfile           = "profile"
)

func openURL(ctx context.Context, u *url.URL) (backend.Driver, error) {
	cfg, err := configFromURL(u)
	if err != nil {
		return nil, err
	}
	return newDriver(ctx, cfg)
}

// configFromURL parses an s3:// URL into a Config, rejecting parameters it
// does not know so that a typo cannot silently fall back to a default.
func configFromURL(u *url.URL) (Config, error) {
	if err := backend.CheckParams(u, paramRegion, paramEndpoint, paramUsePathStyle, paramDisableHTTPS,
		paramRequestChecksum, paramResponseChecksum, paramConditionalDelete, paramMultipart, paramPartSize, paramProfile); err != nil {
		return Config{}, err
	}
	bucket, prefix, err := backend.BucketAndPrefix(u)
	if err != nil {
		return Config{}, err
	}
	q := u.Query()
	cfg := Config{Bucket: bucket, Prefix: prefix, Region: q.Get(paramRegion), Endpoint: q.Get(paramEndpoint), Profile: q.Get(paramProfile)}
	if q.Has(paramProfile) && cfg.Profile == "" {
		return Config{}, fmt.Errorf("backend: s3 URL parameter %s is empty: want a profile name from the shared AWS config", paramProfile)
	}
	if u.User != nil {
		// s3://KEY:SECRET@bucket: static credentials, for stores that
		// hand out a key pair (MinIO, R2). The secret is never printed:
		// Describe says "static from URL" and callers show u.Redacted().
		secret, ok := u.User.Password()
		if u.User.Username() == "" || !ok || secret == "" {
			return Config{}, fmt.Errorf("backend: s3 URL %s: user info must be ACCESS_KEY_ID:SECRET_ACCESS_KEY", u.Redacted())
		}
		cfg.AccessKeyID, cfg.SecretAccessKey, cfg.fromURL = u.User.Username(), secret, true
	}
	bad := func(name string, err error) (Config, error) {
		return Config{}, fmt.Errorf("backend: s3 URL parameter %s=%q: %w", name, q.Get(name), err)
	}
	boolParam := func(name string, dst *bool, def bool) error {
		*dst = def
		if !q.Has(name) {
			return nil
		}
		v, err := strconv.ParseBool(q.Get(name))
		*dst = v
		return err
	}
	var conditionalDelete bool
	for _, p := range []struct {
		name string
		dst  *bool
		def  bool
	}{
		{paramUsePathStyle, &cfg.UsePathStyle, false},
		{paramDisableHTTPS, &cfg.DisableHTTPS, false},
		{paramConditionalDelete, &conditionalDelete, true},
	} {
		if err := boolParam(p.name, p.dst, p.def); err != nil {
			return bad(p.name, err)
		}
	}
	cfg.DisableConditionalDelete = !conditionalDelete

	switch v := q.Get(paramRequestChecksum); v {
	case "":
	case "when_supported":
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
	case "when_required":
		cfg.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	default:
		return bad(paramRequestChecksum, fmt.Errorf("want when_supported or when_required"))
	}
	switch v := q.Get(paramResponseChecksum); v {
	case "":
	case "when_supported":
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported
	case "when_required":
		cfg.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	default:
		return bad(paramResponseChecksum, fmt.Errorf("want when_supported or when_required"))
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{paramMultipart, &cfg.MultipartThreshold}, {paramPartSize, &cfg.PartSize}} {
		if !q.Has(p.name) {
			continue
		}
		n, err := strconv.ParseInt(q.Get(p.name), 10, 64)
		if err != nil || n <= 0 {
			return bad(p.name, fmt.Errorf("want a positive number of bytes"))
		}
		*p.dst = n
	}
	return cfg, nil
}
