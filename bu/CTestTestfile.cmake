# CMake generated Testfile for 
# Source directory: /tmp/wt
# Build directory: /tmp/wt/bu
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("src/autodriver")
subdirs("tests")
