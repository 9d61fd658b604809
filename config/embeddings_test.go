package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidate_EmbeddingsTaskType(t *testing.T) {
	y := `backends: {g: {type: gemini, api_key: k, base_url: "https://generativelanguage.googleapis.com"}}
models: {e: {backend: g, embeddings: {task_type: %s}}}`
	if _, err := Parse([]byte(fmt.Sprintf(y, "CLUSTERING")), nil); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte(fmt.Sprintf(y, "clustering")), nil)
	if err == nil || !strings.Contains(err.Error(), `models.e.embeddings.task_type: "clustering" is not one of`) {
		t.Fatalf("err = %v", err)
	}
}
