"""The seeded run simulator: writes raw runs with their ground truth, and checks metrics against it."""
