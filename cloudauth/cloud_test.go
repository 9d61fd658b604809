package cloudauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNew_ConfigErrors: a credential that cannot be made is an error at start naming the
// config key, never a file's content or a secret.
func TestNew_ConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notCreds := filepath.Join(dir, "not.json")
	os.WriteFile(notCreds, []byte(`{"type":"s3cr3t-kind","private_key":"s3cr3t-pem"}`), 0o600)
	t.Setenv("AZURE_TENANT_ID", "")
	t.Setenv("AZURE_CLIENT_ID", "id")
	t.Setenv("AZURE_CLIENT_SECRET", "s3cr3t")
	tests := []struct {
		name string
		new  func() error
		want string
	}{
		{"a missing credentials file", func() error {
			_, err := NewGoogle(GoogleOptions{Backend: "vx", CredentialsFile: filepath.Join(dir, "missing.json")})
			return err
		}, "backends.vx.vertex.credentials_file"},
		{"a file that is not credentials", func() error {
			_, err := NewGoogle(GoogleOptions{Backend: "vx", CredentialsFile: notCreds})
			return err
		}, "backends.vx.vertex.credentials_file"},
		{"client_secret without AZURE_TENANT_ID", func() error {
			_, err := NewAzure(AzureOptions{Backend: "aoai", Credential: "client_secret", Scope: "s"})
			return err
		}, "backends.aoai.azure.credential client_secret: AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET must all be set"},
		{"an unknown credential", func() error {
			_, err := NewAzure(AzureOptions{Backend: "aoai", Credential: "cli"})
			return err
		}, "backends.aoai.azure.credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.new()
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %v, want one naming %q and no secret", err, tt.want)
			}
		})
	}
}

// TestKnownAuthority: the Entra authorities of the clouds azcore knows keep Microsoft's
// instance discovery (with or without their trailing slash, in any case); any other
// authority, such as an AZURE_AUTHORITY_HOST of a private cloud, has its metadata asked
// of itself.
func TestKnownAuthority(t *testing.T) {
	for host, known := range map[string]bool{
		"":                                   true,
		"https://login.microsoftonline.com/": true,
		"https://login.microsoftonline.com":  true,
		"https://LOGIN.microsoftonline.us/":  true,
		"https://login.chinacloudapi.cn/":    true,
		"https://127.0.0.1:8443/":            false,
		"https://login.example-stack.local/": false,
	} {
		if got := knownAuthority(host); got != known {
			t.Errorf("knownAuthority(%q) = %v, want %v", host, got, known)
		}
	}
}
