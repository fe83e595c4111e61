"""Learned agents (PPO / MaskablePPO) for every environment family. Filled in by the agents issue."""
