"""Differential fuzzing campaigns and the regression corpus.

What belongs here: graph generation (NNSmith), campaign drivers that compile each graph, run it on
every available backend and compare with the reference interpreter, the campaign database and
reproducer folders, and the pytest plugin for regression kernels.
"""
