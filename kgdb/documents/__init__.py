"""Documents into the graph (KAG's builder): chunking, extraction, alignment, the mutual index."""
