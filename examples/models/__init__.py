"""Small models that are not in accelkit's zoo: the capstone (notebook 09) is tested on them."""
