"""Measurement of the training loop: phases, scalars, memory, logs, TensorBoard, profiling.

Runs in the user's process, armed by ``agent.runtime.install``; the CLI's profile and overfit commands drive it.
"""
