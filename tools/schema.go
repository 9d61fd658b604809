package tools

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the name a tool's schema is compiled under; each schema gets its own
// compiler, so one name serves all.
const schemaURL = "agate:///parameters.json"

// compileSchema compiles a tool's parameters schema. Schemas without "$schema" are read as
// draft 2020-12. No external reference is ever loaded (a schema from a remote MCP server
// must not make the gateway read files or fetch URLs); a $ref must stay inside the
// document. The schema must describe an object: its "type", if present, must be "object".
func compileSchema(params []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	if typ, ok := obj["type"]; ok && typ != "object" {
		return nil, fmt.Errorf(`type is %v, want "object"`, typ)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{}) // refuse every external reference
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}
