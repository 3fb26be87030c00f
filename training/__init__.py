"""Training: WordPiece tokenizers, BERT pretraining (MLM + NSP), siamese and cross-encoder fine-tuning."""
