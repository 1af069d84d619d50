# cmake -DINPUT=kernels.spv -DOUTPUT=kernels_spv.inc -P embed_spirv.cmake:
# the module's bytes as a C initializer list.
file(READ ${INPUT} bytes HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${bytes}")
file(WRITE ${OUTPUT} "${bytes}\n")
