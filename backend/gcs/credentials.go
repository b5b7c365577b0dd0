package gcs

import (
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"

	"google.golang.org/api/option"

	"github.com/siltsync/silt/backend"
)

// envCredentials is the variable the Google SDKs read a credentials file
// name from.
const envCredentials = "GOOGLE_APPLICATION_CREDENTIALS"

// CredentialsFileError is returned when a credentials file, named by
// Config.CredentialsFile, a URL's ?credentials= or
// GOOGLE_APPLICATION_CREDENTIALS, is missing, unreadable or not a Google
// credentials file. It matches [backend.ErrCredentials] and names the
// path; it never quotes the file's content.
type CredentialsFileError struct {
	Path   string // the file as given
	From   string // where the name came from: "Config.CredentialsFile", envCredentials, ...
	Reason string // "does not exist", "is unreadable", "is not a Google credentials file"
	Err    error
}

func (e *CredentialsFileError) Error() string {
	return fmt.Sprintf("gcs: credentials file %s (from %s) %s: %v", e.Path, e.From, e.Reason, e.Err)
}

// Unwrap lets errors.Is match backend.ErrCredentials and the cause.
func (e *CredentialsFileError) Unwrap() []error { return []error{backend.ErrCredentials, e.Err} }

// credentialTypes are the "type" values of the files the SDK loads.
var credentialTypes = []option.CredentialsType{
	option.ServiceAccount, option.AuthorizedUser, option.ImpersonatedServiceAccount, option.ExternalAccount,
	"gdc_service_account", "external_account_authorized_user",
}

// checkCredentialsFile reads path far enough to know its type, so that a
// wrong path fails at open with the path named, not later with an opaque
// token error.
func checkCredentialsFile(path, from string) (option.CredentialsType, error) {
	fail := func(reason string, err error) (option.CredentialsType, error) {
		return "", &CredentialsFileError{Path: path, From: from, Reason: reason, Err: err}
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fail("does not exist", err)
	case err != nil:
		return fail("is unreadable", err)
	}
	var head struct {
		Type option.CredentialsType `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		// The syntax error's offset only: the content may be a key.
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("invalid JSON at byte %d", se.Offset)
		} else {
			err = errors.New("not a JSON object with a string \"type\"")
		}
		return fail("is not a Google credentials file", err)
	}
	if !slices.Contains(credentialTypes, head.Type) {
		return fail("is not a Google credentials file", fmt.Errorf("type %q, want one of %v", head.Type, credentialTypes))
	}
	return head.Type, nil
}

// credentials returns the client options for cfg's credentials and the
// description of their source.
func credentials(cfg Config) ([]option.ClientOption, string, error) {
	emulator := os.Getenv("STORAGE_EMULATOR_HOST")
	file, from := cfg.CredentialsFile, cfg.credentialsFrom
	if from == "" {
		from = "Config.CredentialsFile"
	}
	if file == "" {
		if file = os.Getenv(envCredentials); file == "" {
			if emulator != "" {
				return nil, "none (emulator at STORAGE_EMULATOR_HOST)", nil
			}
			return nil, "application default (gcloud's application_default_credentials.json, else the metadata server)", nil
		}
		from = envCredentials
	}
	typ, err := checkCredentialsFile(file, from)
	if err != nil {
		return nil, "", err
	}
	desc := fmt.Sprintf("GCS credentials file %s (%s, from %s)", file, typ, from)
	if emulator != "" {
		// The client sends no credentials to an emulator; the file was
		// still checked, as it will be used without one.
		return nil, desc + "; unused with the emulator at STORAGE_EMULATOR_HOST", nil
	}
	if from == envCredentials {
		return nil, desc, nil // the SDK reads it itself
	}
	return []option.ClientOption{option.WithAuthCredentialsFile(typ, file)}, desc, nil
}
