"""Tests of iclab.analysis."""
