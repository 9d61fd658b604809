// Package converse is the upstream dialect of Amazon Bedrock's runtime API: Converse and
// ConverseStream (POST /model/{modelId}/converse, /converse-stream), the one request and
// response shape Bedrock gives every model, and the wrapping of InvokeModelWithResponseStream,
// whose chunk events carry a model's own stream events base64-encoded (InvokeStream: the
// backend feeds them to that model's dialect, Claude's being translate/anthropic).
//
// A ConverseStream answer, like InvokeModelWithResponseStream's, is an AWS event stream
// (application/vnd.amazon.eventstream), not SSE: package upstream decodes its frames with
// the AWS SDK's eventstream package (upstream.PumpEventStream) and hands this package's
// StreamDecoder each event frame's :event-type (messageStart, contentBlockStart,
// contentBlockDelta, contentBlockStop, messageStop, metadata) as the type and its JSON
// payload as the data; exception frames never reach the decoder.
//
// The wire format is that of the Bedrock runtime API reference and the AWS SDKs' model of
// it (aws-sdk-go-v2 service/bedrockruntime); the recordings in testdata say where each
// came from (testdata/README.md).
package converse
