package config

import (
	"strings"
)

// Azure configures a backend of type azure: Azure OpenAI (Azure AI Foundry) deployments,
// called with the OpenAI chat completions or Responses wire. The backend's base_url is the
// resource's endpoint (https://<resource>.openai.azure.com); a model's upstream name
// (models.<name>.upstream_model, default the model's own name) is the deployment's name.
type Azure struct {
	// API is the API the deployments are called with: "chat" (chat completions, the
	// default) or "responses".
	API string `koanf:"api"`
	// APIVersion is the api-version of the deployment-scoped surface: chat goes to
	// /openai/deployments/<deployment>/chat/completions?api-version=<APIVersion>, Responses
	// to /openai/responses?api-version=<APIVersion>. Empty (the default) calls the v1
	// surface, /openai/v1/chat/completions and /openai/v1/responses, which takes no
	// api-version, with the deployment's name as the model.
	APIVersion string `koanf:"api_version"`
	// Auth is how the gateway authenticates: "api_key" (the api-key header with the
	// backend's api_key) or "entra" (a Microsoft Entra ID bearer token, see Credential).
	// Default: api_key when api_key is set, else entra.
	Auth string `koanf:"auth"`
	// Credential is where an entra token comes from: "default" (the Azure SDK's default
	// chain: the AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET environment, workload
	// identity, managed identity, then developer tools), "client_secret" (those three
	// variables only), "workload_identity" (AZURE_FEDERATED_TOKEN_FILE with AZURE_CLIENT_ID
	// and AZURE_TENANT_ID, as AKS sets them) or "managed_identity". Default "default".
	Credential string `koanf:"credential"`
	// ManagedIdentityClientID selects a user-assigned managed identity (credential
	// managed_identity or default); empty means the system-assigned one.
	ManagedIdentityClientID string `koanf:"managed_identity_client_id"`
	// AuthorityHost is the Entra authority, for sovereign clouds (Azure Government:
	// https://login.microsoftonline.us/). Default the Azure public cloud's,
	// https://login.microsoftonline.com/.
	AuthorityHost string `koanf:"authority_host"`
	// Scope is the scope of the entra token. Default
	// https://cognitiveservices.azure.com/.default.
	Scope string `koanf:"scope"`
}

// The values of Azure fields and their defaults.
var (
	azureAPIs        = []string{"chat", "responses"}
	azureAuths       = []string{"api_key", "entra"}
	azureCredentials = []string{"default", "client_secret", "workload_identity", "managed_identity"}
)

// DefaultAzureScope is the scope of an Azure OpenAI entra token (Azure.Scope).
const DefaultAzureScope = "https://cognitiveservices.azure.com/.default"

// defaultAzure fills the defaults of an azure backend's azure section.
func defaultAzure(b *Backend) {
	if b.Type != "azure" {
		return
	}
	a := &b.Azure
	setDefault(&a.API, "chat")
	if a.Auth == "" {
		a.Auth = "entra"
		if strings.TrimSpace(b.APIKey) != "" {
			a.Auth = "api_key"
		}
	}
	setDefault(&a.Credential, "default")
	setDefault(&a.Scope, DefaultAzureScope)
}

// validateAzure checks an azure backend's azure section, and that no other type has one.
func validateAzure(v *validator, p string, b Backend) {
	a := b.Azure
	if b.Type != "azure" {
		if a != (Azure{}) {
			v.addf(p+".azure", "only for azure backends")
		}
		return
	}
	p += ".azure"
	v.oneOf(p+".api", a.API, append(azureAPIs, ""))
	v.oneOf(p+".auth", a.Auth, append(azureAuths, ""))
	v.oneOf(p+".credential", a.Credential, append(azureCredentials, ""))
	if strings.ContainsAny(a.APIVersion, "&?#/ ") {
		v.addf(p+".api_version", "must be an api-version such as 2024-10-21 (no URL characters)")
	}
	if a.AuthorityHost != "" {
		v.httpURL(p+".authority_host", a.AuthorityHost)
	}
}
