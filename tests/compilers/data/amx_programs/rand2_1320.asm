.target amx
.output 0 @64 u8[]
.const @64 90
