package config

// ModelEmbeddings is a model's settings for POST /v1/embeddings (models.<name>.embeddings).
type ModelEmbeddings struct {
	// TaskType is the Gemini taskType sent with each text when the request sets none (its
	// extension member task_type): one of embedTaskTypes. Empty (default): none, the
	// model's own default. Other backends ignore it.
	TaskType string `koanf:"task_type"`
}

// embedTaskTypes are the Gemini API's TaskType values.
var embedTaskTypes = []string{"", "TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT",
	"SEMANTIC_SIMILARITY", "CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING", "FACT_VERIFICATION",
	"CODE_RETRIEVAL_QUERY"}

// validateEmbeddings checks models.<name>.embeddings, at path p (the model's).
func (v *validator) validateEmbeddings(p string, e *ModelEmbeddings) {
	if e == nil {
		return
	}
	v.oneOf(p+".embeddings.task_type", e.TaskType, embedTaskTypes)
}
