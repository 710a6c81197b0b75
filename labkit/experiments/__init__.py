"""Experiments the labs run and print: tables and comparisons built on the math and the
trainers (``kl_table``: Schulman's KL table by Monte Carlo, KL in the reward vs as a loss).
"""
