.target amx
.input 0 @64 s8[]
.input 1 @128 s8[]
.output 0 @192 u8[2]
.const @192 0040
