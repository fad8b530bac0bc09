"""Search over the stored messages: keyword (FTS5), meaning (vectors), their fusion, snippets and
the index rebuild."""
