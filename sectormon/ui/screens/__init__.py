"""The screens: dashboard, detail, help."""
