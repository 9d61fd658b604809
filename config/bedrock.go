package config

import "regexp"

// Amazon Bedrock backends (type: bedrock). A bedrock backend serves Claude models
// through InvokeModel / InvokeModelWithResponseStream and every other model through
// Converse / ConverseStream, its model ids being Bedrock's (anthropic.claude-...,
// amazon.nova-..., a cross-region inference profile such as us.anthropic.claude-..., or
// an ARN). It authenticates with SigV4 from the AWS SDK's default credential chain, or,
// when api_key is set, with that Bedrock API key as a bearer token.
//
// Its keys besides the common ones:
//
//   - region (required): the AWS region, e.g. us-east-1; requests are signed for it.
//   - profile: the shared config profile the credential chain reads (default: AWS_PROFILE,
//     else default).
//   - base_url: default https://bedrock-runtime.<region>.amazonaws.com.
//   - api_key: a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK); empty means SigV4.

// bedrockRegion is the shape of an AWS region name (us-east-1, eu-central-2, us-gov-west-1).
var bedrockRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// bedrockDefaults sets a bedrock backend's base_url from its region.
func bedrockDefaults(b *Backend) {
	if b.Type == "bedrock" && b.BaseURL == "" && bedrockRegion.MatchString(b.Region) {
		b.BaseURL = "https://bedrock-runtime." + b.Region + ".amazonaws.com"
	}
}

// validateBedrock checks the keys of a bedrock backend, and that no other backend sets them.
func validateBedrock(v *validator, p string, b Backend) {
	if b.Type != "bedrock" {
		if b.Region != "" {
			v.addf(p+".region", "only for bedrock backends")
		}
		if b.Profile != "" {
			v.addf(p+".profile", "only for bedrock backends")
		}
		return
	}
	switch {
	case b.Region == "":
		v.addf(p+".region", "required for bedrock backends (e.g. us-east-1)")
	case !bedrockRegion.MatchString(b.Region):
		v.addf(p+".region", "not an AWS region name (e.g. us-east-1)")
	}
}
