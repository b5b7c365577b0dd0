package s3

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/siltsync/silt/backend"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMultipartThreshold is the object size from which Put switches
	// to a multipart upload. Below it one PutObject is cheaper (one request)
	// and a failed attempt costs at most this many bytes of re-send.
	DefaultMultipartThreshold = 64 << 20
	// DefaultPartSize is the part size of a multipart upload. Parts are
	// sent one at a time straight from the caller's body, so it costs no
	// memory; it only bounds what one failed part re-sends.
	DefaultPartSize = 16 << 20
	// MinPartSize is S3's smallest allowed part (except the last).
	MinPartSize = 5 << 20
	// DefaultRegion is used when neither Config nor the AWS environment
	// names one; third-party stores usually accept any region.
	DefaultRegion = "us-east-1"
	// maxParts is S3's limit on parts per upload; PartSize grows to fit.
	maxParts = 10000
)

// Config configures a Backend. Only Bucket is required.
type Config struct {
	// Bucket is the bucket name; it must already exist.
	Bucket string
	// Prefix is prepended to every key, so several trees can share one
	// bucket; a trailing "/" is added when missing.
	Prefix string
	// Region is the bucket's region. Empty takes AWS_REGION or the shared
	// config file, then DefaultRegion.
	Region string
	// Endpoint overrides the AWS endpoint, for MinIO, Ceph, R2, versitygw
	// or an emulator ("http://127.0.0.1:7070"). A bare host gets https://
	// (http:// with DisableHTTPS).
	Endpoint string
	// UsePathStyle addresses the bucket as a path segment rather than a
	// host name; most self-hosted stores and emulators need it.
	UsePathStyle bool
	// DisableHTTPS makes a scheme-less Endpoint plain http.
	DisableHTTPS bool
	// RequestChecksumCalculation overrides the SDK's default of sending a
	// CRC checksum with every upload, which some third-party stores
	// reject; set it (and ResponseChecksumValidation) to WhenRequired for
	// those.
	RequestChecksumCalculation aws.RequestChecksumCalculation
	// ResponseChecksumValidation overrides the SDK's default of asking for
	// and checking a checksum on every download.
	ResponseChecksumValidation aws.ResponseChecksumValidation
	// DisableConditionalDelete declares that the store ignores If-Match on
	// DeleteObject (gofakes3; AWS before 2025-09). The zero value claims
	// conditional delete, as AWS supports it; a store that silently
	// ignores it would let a stale delete through, so say so here (the
	// probe package detects it).
	DisableConditionalDelete bool
	// MultipartThreshold is the size from which Put uses a multipart
	// upload; 0 means DefaultMultipartThreshold.
	MultipartThreshold int64
	// PartSize is the multipart part size; 0 means DefaultPartSize. It is
	// raised to MinPartSize, and as needed to fit S3's 10,000-part limit.
	PartSize int64
	// MaxAttempts is the number of attempts the SDK makes per request;
	// 0 means 1. silt retries in backend.Retry, which knows which requests
	// are safe to repeat and shares one backoff budget; SDK retries
	// underneath would multiply attempts and hide throttling from it.
	MaxAttempts int
	// HTTPClient, when set, sends every request (tests use it to reach an
	// httptest server or inject faults).
	HTTPClient *http.Client
	// AWSConfig, when set, is used instead of loading the default
	// credential chain (environment, shared files, IMDS); Region,
	// Endpoint and HTTPClient above still override it.
	AWSConfig *aws.Config
	// Profile names the shared config profile to take credentials and
	// region from (as `aws --profile`); it wins over AWS_PROFILE and over
	// AWS_ACCESS_KEY_ID in the environment, as an explicit profile does
	// in the AWS SDK. Empty follows the default chain, which honours
	// AWS_PROFILE.
	Profile string
	// AccessKeyID and SecretAccessKey (and SessionToken, optional) are
	// static credentials; they win over Profile and the environment.
	// Both or neither must be set.
	AccessKeyID, SecretAccessKey, SessionToken string

	fromURL bool // the static credentials came from a URL's user info
}

// withDefaults validates c and fills zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Bucket == "" {
		return c, fmt.Errorf("s3: Config.Bucket is empty")
	}
	if c.Prefix != "" {
		p := strings.TrimSuffix(c.Prefix, "/")
		if err := backend.ValidateKey(p); err != nil {
			return c, fmt.Errorf("s3: Config.Prefix: %w", err)
		}
		c.Prefix = p + "/"
	}
	if c.MultipartThreshold <= 0 {
		c.MultipartThreshold = DefaultMultipartThreshold
	}
	if c.PartSize <= 0 {
		c.PartSize = DefaultPartSize
	}
	c.PartSize = max(c.PartSize, MinPartSize)
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 1
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return c, fmt.Errorf("s3: Config.AccessKeyID and SecretAccessKey: set both or neither")
	}
	if c.Endpoint != "" && !strings.Contains(c.Endpoint, "://") {
		scheme := "https://"
		if c.DisableHTTPS {
			scheme = "http://"
		}
		c.Endpoint = scheme + c.Endpoint
	}
	return c, nil
}

// client builds the SDK client for c (after withDefaults).
func (c Config) client(ctx context.Context) (*s3api.Client, error) {
	var awsCfg aws.Config
	if c.AWSConfig != nil {
		awsCfg = c.AWSConfig.Copy()
		if c.AccessKeyID != "" {
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
		}
	} else {
		// The SDK's own log (WARN falling back to IMDSv1, printed before
		// any error of ours) says nothing a user can act on: silt's error
		// names every place it looked for credentials.
		opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithLogger(logging.Nop{})}
		if c.Profile != "" {
			opts = append(opts, awsconfig.WithSharedConfigProfile(c.Profile))
		}
		if c.AccessKeyID != "" {
			opts = append(opts, awsconfig.WithCredentialsProvider(
				credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
		}
		var err error
		awsCfg, err = awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			if c.Profile != "" {
				return nil, fmt.Errorf("s3: load AWS config for profile %q (%s): %w: %w", c.Profile, sharedFiles(), backend.ErrCredentials, err)
			}
			return nil, fmt.Errorf("s3: load AWS config: %w", err)
		}
	}
	if c.Region != "" {
		awsCfg.Region = c.Region
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultRegion
	}
	if c.HTTPClient != nil {
		awsCfg.HTTPClient = c.HTTPClient
	}
	return s3api.NewFromConfig(awsCfg, func(o *s3api.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.UsePathStyle
		o.EndpointOptions.DisableHTTPS = c.DisableHTTPS
		if c.RequestChecksumCalculation != aws.RequestChecksumCalculationUnset {
			o.RequestChecksumCalculation = c.RequestChecksumCalculation
		}
		if c.ResponseChecksumValidation != aws.ResponseChecksumValidationUnset {
			o.ResponseChecksumValidation = c.ResponseChecksumValidation
		}
		o.RetryMaxAttempts = c.MaxAttempts
		// A library must not write to stderr; a store that sends no
		// checksum is not an error the caller could act on.
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}

// partSize is the part size for an object of size bytes.
func (c Config) partSize(size int64) int64 {
	return max(c.PartSize, (size+maxParts-1)/maxParts)
}
