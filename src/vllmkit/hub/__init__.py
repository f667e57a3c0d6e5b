"""Model sources: Hugging Face Hub, ModelScope, local folders and the bundled catalog."""
