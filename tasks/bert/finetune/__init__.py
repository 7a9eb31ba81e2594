"""BERT fine-tuning: sentence classification, B-I-O tagging and answer spans (issue 29)."""
