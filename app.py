"""lagmon's dashboard (Streamlit): `streamlit run app.py`.

The frame only: pages arrive with the dashboard work. Until then it says plainly
what it will show, rather than an empty screen.
"""
import streamlit as st

st.set_page_config(page_title="lagmon", layout="wide")
st.title("lagmon")
st.info("The dashboard is not built yet. Use `python -m monitor --help` for what works today.")
