package config

import (
	"regexp"
)

// Vertex configures a backend of type vertex: models on Google Cloud Vertex AI, with
// Application Default Credentials. Publisher google calls Gemini with the Gemini wire
// (generateContent, streamGenerateContent?alt=sse); publisher anthropic calls Claude with
// the Anthropic Messages wire (rawPredict, streamRawPredict). A model's upstream name is
// the publisher's model id (gemini-2.5-flash, claude-sonnet-4-5@20250929).
type Vertex struct {
	// Project is the Google Cloud project id. Required.
	Project string `koanf:"project"`
	// Location is the region (us-east5, europe-west1) or "global". Required. It also gives
	// the default base_url: https://aiplatform.googleapis.com for global, else
	// https://<location>-aiplatform.googleapis.com.
	Location string `koanf:"location"`
	// Publisher is "google" (Gemini, the default) or "anthropic" (Claude).
	Publisher string `koanf:"publisher"`
	// CredentialsFile is a service-account (or other) credentials JSON file. Empty (the
	// default) means Application Default Credentials: GOOGLE_APPLICATION_CREDENTIALS, the
	// gcloud application-default file, or the metadata server on Google Cloud.
	CredentialsFile string `koanf:"credentials_file"`
}

var (
	vertexPublishers = []string{"google", "anthropic"}
	// vertexName is a project id or a location: letters, digits, dashes (and dots and
	// colons in domain-scoped project ids).
	vertexName = regexp.MustCompile(`^[a-z0-9][a-z0-9.:-]*$`)
)

// defaultVertex fills the defaults of a vertex backend: its publisher and its base_url.
func defaultVertex(b *Backend) {
	if b.Type != "vertex" {
		return
	}
	setDefault(&b.Vertex.Publisher, "google")
	switch loc := b.Vertex.Location; {
	case b.BaseURL != "" || !vertexName.MatchString(loc):
	case loc == "global":
		b.BaseURL = "https://aiplatform.googleapis.com"
	default:
		b.BaseURL = "https://" + loc + "-aiplatform.googleapis.com"
	}
}

// validateVertex checks a vertex backend's vertex section, and that no other type has one.
func validateVertex(v *validator, p string, b Backend) {
	x := b.Vertex
	if b.Type != "vertex" {
		if x != (Vertex{}) {
			v.addf(p+".vertex", "only for vertex backends")
		}
		return
	}
	p += ".vertex"
	if !vertexName.MatchString(x.Project) {
		v.addf(p+".project", "required: a Google Cloud project id")
	}
	if !vertexName.MatchString(x.Location) {
		v.addf(p+".location", "required: a region such as us-east5, or global")
	}
	v.oneOf(p+".publisher", x.Publisher, append(vertexPublishers, ""))
}
