"""Tests for the ui/ helpers of the Streamlit app."""
