package cloudauth

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// AzureOptions are what an Entra ID signer needs (config.Azure, mapped by proxy).
type AzureOptions struct {
	// Backend names the backend in errors.
	Backend string
	// Credential is "default", "client_secret", "workload_identity" or "managed_identity"
	// (config.Azure.Credential); "" is "default".
	Credential string
	// ManagedIdentityClientID selects a user-assigned managed identity.
	ManagedIdentityClientID string
	// AuthorityHost is the Entra authority; "" is the public cloud's.
	AuthorityHost string
	// Scope is the token's scope (config.DefaultAzureScope).
	Scope string
	// HTTPClient sends the credential's requests to the authority (and the managed
	// identity endpoint); nil is the Azure SDK's default.
	HTTPClient *http.Client
	// Now is the clock of the token cache; nil is time.Now.
	Now func() time.Time
}

// azureSources name each credential in errors: where its secrets come from, never them.
var azureSources = map[string]string{
	"default":           "azure default credential chain (environment, workload identity, managed identity, developer tools)",
	"client_secret":     "entra client secret (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET)",
	"workload_identity": "entra workload identity (AZURE_FEDERATED_TOKEN_FILE)",
	"managed_identity":  "azure managed identity",
}

// NewAzure returns the Entra ID bearer-token signer of an azure backend. The credential is
// made at once (it reads its environment: a client_secret credential without its
// variables is an error naming them); tokens are fetched at the first request.
func NewAzure(o AzureOptions) (*Tokens, error) {
	if o.Credential == "" {
		o.Credential = "default"
	}
	source, ok := azureSources[o.Credential]
	if !ok {
		return nil, fmt.Errorf("backends.%s.azure.credential: unknown credential %q", o.Backend, o.Credential)
	}
	cred, err := azureCredential(o)
	if err != nil {
		// azidentity's constructor errors name missing settings, never secret values.
		return nil, fmt.Errorf("backends.%s.azure.credential %s: %w", o.Backend, o.Credential, err)
	}
	scopes := []string{o.Scope}
	fetch := func(ctx context.Context) (Token, error) {
		at, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: scopes})
		if err != nil {
			return Token{}, err
		}
		return Token{Value: at.Token, Expiry: at.ExpiresOn}, nil
	}
	return NewTokens(o.Backend, source, fetch, o.Now), nil
}

// azureCredential makes the azidentity credential o names.
func azureCredential(o AzureOptions) (azcore.TokenCredential, error) {
	co := azcore.ClientOptions{}
	if o.AuthorityHost != "" {
		co.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: o.AuthorityHost, Services: cloud.AzurePublic.Services}
	}
	if o.HTTPClient != nil {
		co.Transport = o.HTTPClient
	}
	// A custom authority is not one Microsoft's instance discovery knows (sovereign and
	// private clouds): its metadata is asked of the authority itself. That holds for one
	// configured here, and for one the environment names (AZURE_AUTHORITY_HOST, which
	// azidentity reads when none is configured) unless it is a known cloud's.
	custom := o.AuthorityHost != "" || !knownAuthority(os.Getenv("AZURE_AUTHORITY_HOST"))
	var mid azidentity.ManagedIDKind
	if o.ManagedIdentityClientID != "" {
		mid = azidentity.ClientID(o.ManagedIdentityClientID)
	}
	switch o.Credential {
	case "client_secret":
		tenant, client, secret := os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID"), os.Getenv("AZURE_CLIENT_SECRET")
		if tenant == "" || client == "" || secret == "" {
			return nil, fmt.Errorf("AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET must all be set")
		}
		return azidentity.NewClientSecretCredential(tenant, client, secret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: custom})
	case "workload_identity":
		return azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: custom})
	case "managed_identity":
		return azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{ClientOptions: co, ID: mid})
	}
	if mid != nil && os.Getenv("AZURE_CLIENT_ID") == "" {
		// The default chain's managed identity reads the user-assigned id from AZURE_CLIENT_ID.
		return nil, fmt.Errorf("managed_identity_client_id needs credential managed_identity (or AZURE_CLIENT_ID)")
	}
	return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: co, DisableInstanceDiscovery: custom})
}

// knownAuthority reports whether host is empty or the Entra authority of one of the
// clouds azcore knows (public, US Government, China), whose instance metadata Microsoft's
// instance discovery serves.
func knownAuthority(host string) bool {
	if host == "" {
		return true
	}
	host = strings.TrimSuffix(host, "/")
	for _, c := range []cloud.Configuration{cloud.AzurePublic, cloud.AzureGovernment, cloud.AzureChina} {
		if strings.EqualFold(host, strings.TrimSuffix(c.ActiveDirectoryAuthorityHost, "/")) {
			return true
		}
	}
	return false
}
