package config

import "regexp"

// Bedrock configures a backend of type bedrock: Amazon Bedrock's runtime API in one region.
// It serves Claude models through InvokeModel / InvokeModelWithResponseStream and every
// other model through Converse / ConverseStream, a model's upstream name being Bedrock's
// model id (anthropic.claude-..., amazon.nova-..., a cross-region inference profile such
// as us.anthropic.claude-..., or an ARN). It authenticates with SigV4 from the AWS SDK's
// default credential chain, or, when the backend's api_key is set, with that Bedrock API
// key (AWS_BEARER_TOKEN_BEDROCK) as a bearer token. Its base_url defaults to
// https://bedrock-runtime.<region>.amazonaws.com.
type Bedrock struct {
	// Region is the AWS region (us-east-1) the requests are signed for. Required.
	Region string `koanf:"region"`
	// Profile is the shared config profile the credential chain reads; empty means
	// AWS_PROFILE's, else default.
	Profile string `koanf:"profile"`
}

// bedrockRegion is the shape of an AWS region name (us-east-1, eu-central-2, us-gov-west-1).
var bedrockRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// defaultBedrock sets a bedrock backend's base_url from its region.
func defaultBedrock(b *Backend) {
	if b.Type == "bedrock" && b.BaseURL == "" && bedrockRegion.MatchString(b.Bedrock.Region) {
		b.BaseURL = "https://bedrock-runtime." + b.Bedrock.Region + ".amazonaws.com"
	}
}

// validateBedrock checks a bedrock backend's bedrock section, and that no other type has one.
func validateBedrock(v *validator, p string, b Backend) {
	x := b.Bedrock
	if b.Type != "bedrock" {
		if x != (Bedrock{}) {
			v.addf(p+".bedrock", "only for bedrock backends")
		}
		return
	}
	p += ".bedrock"
	switch {
	case x.Region == "":
		v.addf(p+".region", "required: an AWS region such as us-east-1")
	case !bedrockRegion.MatchString(x.Region):
		v.addf(p+".region", "not an AWS region name (e.g. us-east-1)")
	}
}
