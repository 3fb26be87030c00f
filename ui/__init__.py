"""Helpers for the Streamlit pages in app.py: text formatting and upload handling, no widgets."""
