#!/bin/bash
pip3 install --break-system-packages --root-user-action=ignore -q pytest==8.4.1 pytest-json-ctrf==0.3.5{extra}
mkdir -p /logs/verifier
pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA{v}{tb}
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit 0
