.target amx
.output 0 @64 s8[1,4]
.const @64 0f0f0f0f
