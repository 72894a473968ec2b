# CMake generated Testfile for 
# Source directory: /tmp/wt/src/autodriver
# Build directory: /tmp/wt/bu/src/autodriver
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
