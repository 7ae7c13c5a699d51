"""retrieval-monitor: know every day whether your retrieval still finds the right documents."""
