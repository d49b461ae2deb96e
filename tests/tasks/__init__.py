"""Tests of iclab.tasks."""
