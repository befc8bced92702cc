.target amx
.output 0 @64 s32[5]
.const @64 b962e3f5ba74416401000000cb7fddc007000000
