package cloudauth

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

// GoogleScope is the OAuth2 scope of Vertex AI's access tokens.
const GoogleScope = "https://www.googleapis.com/auth/cloud-platform"

// GoogleOptions are what a Google OAuth2 signer needs (config.Vertex, mapped by proxy).
type GoogleOptions struct {
	// Backend names the backend in errors.
	Backend string
	// CredentialsFile is a credentials JSON file (service account, authorized user,
	// external account, impersonated service account); "" is Application Default
	// Credentials.
	CredentialsFile string
	// HTTPClient fetches the tokens; nil is http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock of the token cache; nil is time.Now.
	Now func() time.Time
}

// googleFileTypes are the credential files a configured credentials_file may hold: the
// types Application Default Credentials reads from a file, each checked by the library.
var googleFileTypes = []google.CredentialsType{google.ServiceAccount, google.AuthorizedUser,
	google.ExternalAccount, google.ImpersonatedServiceAccount}

// NewGoogle returns the OAuth2 bearer-token signer of a vertex backend. A configured
// credentials file is read and checked at once (the error names the file, not its
// content); Application Default Credentials are looked up at the first request, so that
// a gateway starts without waiting for a metadata server.
//
// Each refresh builds the credentials afresh and asks them for a new token: the library's
// own cache would hand back the token Tokens is refreshing until seconds before its expiry.
func NewGoogle(o GoogleOptions) (*Tokens, error) {
	params := google.CredentialsParams{Scopes: []string{GoogleScope}, EarlyTokenRefresh: RefreshMargin + time.Minute}
	source := "application default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud, metadata server)"
	find := func(ctx context.Context) (*google.Credentials, error) {
		return google.FindDefaultCredentialsWithParams(ctx, params)
	}
	if o.CredentialsFile != "" {
		source = "credentials_file " + o.CredentialsFile
		data, err := os.ReadFile(o.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("backends.%s.vertex.credentials_file: %w", o.Backend, err)
		}
		typ, err := googleFileType(data, params)
		if err != nil {
			return nil, fmt.Errorf("backends.%s.vertex.credentials_file %s: not a Google credentials file of a known type", o.Backend, o.CredentialsFile)
		}
		find = func(ctx context.Context) (*google.Credentials, error) {
			return google.CredentialsFromJSONWithTypeAndParams(ctx, data, typ, params)
		}
	}
	client := o.HTTPClient
	fetch := func(ctx context.Context) (Token, error) {
		if client != nil {
			ctx = context.WithValue(ctx, oauth2.HTTPClient, client)
		}
		creds, err := find(ctx)
		if err != nil {
			return Token{}, err
		}
		tok, err := creds.TokenSource.Token()
		if err != nil {
			return Token{}, err
		}
		return Token{Value: tok.AccessToken, Expiry: tok.Expiry}, nil
	}
	return NewTokens(o.Backend, source, fetch, o.Now), nil
}

// googleFileType returns the type of the credentials JSON data, the first of
// googleFileTypes the library accepts it as.
func googleFileType(data []byte, params google.CredentialsParams) (google.CredentialsType, error) {
	var err error
	for _, typ := range googleFileTypes {
		if _, err = google.CredentialsFromJSONWithTypeAndParams(context.Background(), data, typ, params); err == nil {
			return typ, nil
		}
	}
	return "", err
}
