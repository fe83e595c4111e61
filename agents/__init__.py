"""Learned agents (PPO / MaskablePPO) for every environment family (the agents issue)."""
