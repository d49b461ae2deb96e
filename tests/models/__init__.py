"""Tests of iclab.models."""
