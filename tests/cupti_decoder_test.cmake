# Included from tests/CMakeLists.txt when the CUDA toolkit is found: CUPTI
# record decoding and occupancy from synthesised records. No libcupti calls,
# no driver, no GPU.
add_executable(cupti_decoder_test ${CMAKE_CURRENT_LIST_DIR}/cupti_decoder_test.cpp)
target_link_libraries(cupti_decoder_test PRIVATE ferret_cupti_decode doctest_main ferret_warnings)
add_test(NAME cupti_decoder_test COMMAND cupti_decoder_test)
set_tests_properties(cupti_decoder_test PROPERTIES LABELS "unit")
